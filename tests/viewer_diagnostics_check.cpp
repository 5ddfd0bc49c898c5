// The viewer's attention tomography panel, headless with validation on. Runs
// `rfa-viewer --headless` on viewer_headless_check's model and inputs while the stream grows
// (5 positions per frame), then checks
//  - exit code 0 (rfa-viewer returns 1 on any validation message);
//  - the panel's numbers in --dump-json ("diagnostics": head, window, alpha, effective rank over
//    time, entropy, dim_eff, tau) against Session::head_diagnostics of the same model fed the same
//    positions in this process, at every position of the effective-rank history;
//  - the screenshot: the panel's rectangle holds its plots (ImGui's histogram colour) and text.
// usage: viewer_diagnostics_check RFA_VIEWER VIEWER_HEADLESS_CHECK WORKDIR
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "viewer_check_support.hpp"

#include "model/npy.hpp"
#include "rfa/context.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using viewer_check::Image;

namespace {


bool close(double a, double b, double rtol) { return std::fabs(a - b) <= rtol * std::fabs(b) + 1e-9; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: viewer_diagnostics_check RFA_VIEWER VIEWER_HEADLESS_CHECK WORKDIR\n");
    return 2;
  }
  const fs::path dir = argv[3];
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  if (std::system(("'" + std::string(argv[2]) + "' --make-model '" + dir.string() + "'").c_str()) != 0) {
    std::fprintf(stderr, "cannot make the model\n");
    return 2;
  }
  const int layer = 1, head = 2;
  const double alpha = 1.7;
  const fs::path png = dir / "shot.png", js = dir / "shot.json";
  char cmd[4096];
  std::snprintf(cmd, sizeof cmd,
                "'%s' --headless --model '%s' --npy '%s' --steps 25 --rate 5 --frames 4 --layer %d --head %d "
                "--diagnostics-alpha %g --screenshot '%s' --dump-json '%s'",
                argv[1], (dir / "model").c_str(), (dir / "inputs.npy").c_str(), layer, head, alpha, png.c_str(),
                js.c_str());
  std::printf("$ %s\n", cmd);
  const int rc = std::system(cmd);
  EXPECT(rc == 0, "rfa-viewer exited with %d (non-zero: an error or validation messages)", rc);
  if (rc != 0) return 1;
  const json j = json::parse(std::ifstream(js));
  const json& d = j["diagnostics"];
  EXPECT(d["shown"] == true, "the panel shows no result");
  EXPECT(d["layer"] == layer && d["head"] == head, "panel on layer %d head %d", d["layer"].get<int>(), d["head"].get<int>());
  EXPECT(close(d["alpha"].get<double>(), alpha, 1e-6), "alpha %g", d["alpha"].get<double>());
  const int N = j["position"].get<int>();
  EXPECT(N == 40 && d["position"] == N, "position %d (panel %d), expected 40", N, d["position"].get<int>());
  const auto hist = d["erank_history"].get<std::vector<std::vector<double>>>();
  EXPECT(hist.size() >= 3, "effective rank history has %zu points while the stream grew over 3 frames", hist.size());
  for (size_t k = 1; k < hist.size(); ++k) EXPECT(hist[k][0] > hist[k - 1][0], "history positions not increasing");

  // The same model and positions in this process.
  auto model = rfa::load_model_dir((dir / "model").string());
  auto npy = rfa::read_npy((dir / "inputs.npy").string());
  auto ctx = rfa::Context::create(rfa::context_options_from_environment());  // RFA_DEVICE, RFA_VALIDATION
  if (!model || !npy || !ctx) {
    std::fprintf(stderr, "cannot load the model, the inputs or a context\n");
    return 1;
  }
  const int cols = (int)npy->shape[1], din = cols - 1;
  for (const auto& h : hist) {
    const int pos = (int)h[0];
    rfa::SessionOptions so;
    so.max_context = pos;
    auto s = rfa::Session::create(**ctx, *model, so);
    std::vector<float> x;
    std::vector<double> t;
    for (int i = 0; i < pos; ++i) {
      for (int c = 0; c < din; ++c) x.push_back((float)npy->values[(size_t)i * cols + c]);
      t.push_back(npy->values[(size_t)i * cols + din]);
    }
    if (!s || !(*s)->prefill_values(x, pos, t).ok()) {
      std::fprintf(stderr, "cannot run the session to position %d\n", pos);
      return 1;
    }
    rfa::DiagnosticsRequest r;
    r.layer = layer, r.head = head, r.alpha = alpha;
    r.r0 = r.c0 = -128;  // the panel's default: the last 128 rows and keys
    auto want = rfa::Inspector(**s).head_diagnostics(r);
    if (!want) {
      std::fprintf(stderr, "%s\n", want.status().to_string().c_str());
      return 1;
    }
    std::printf("position %d: panel erank %.6f, session %.6f\n", pos, h[1], want->erank);
    EXPECT(close(h[1], want->erank, 1e-5), "erank at position %d: panel %.8g, session %.8g", pos, h[1], want->erank);
    if (pos != N) continue;
    EXPECT(d["rows"].get<std::vector<int>>() == std::vector<int>({0, N}), "panel rows");
    EXPECT(close(d["entropy_mean"].get<double>(), want->entropy_mean, 1e-5), "entropy mean");
    EXPECT(close(d["max_weight_mean"].get<double>(), want->max_weight_mean, 1e-5), "max weight mean");
    EXPECT(close(d["dim_eff_u"].get<double>(), want->summary.dim_eff_u, 1e-5), "dim_eff U");
    EXPECT(close(d["dim_eff_n"].get<double>(), want->summary.dim_eff_n, 1e-5), "dim_eff N");
    EXPECT(close(d["tau_mean"].get<double>(), want->summary.tau_mean, 1e-5), "tau mean");
    EXPECT(d["rank"] == want->rank, "rank");
  }
  EXPECT((*ctx)->validation_message_count() == 0, "validation messages in this process");

  // The picture: inside the panel, ImGui's histogram colour (the tau histogram and the spectra) and text.
  Image img;
  if (viewer_check::read_image(png.string(), &img)) {
    const auto rect = d["screen"].get<std::vector<double>>();
    int yellow = 0;
    std::set<int> colours;
    for (int y = std::max(0, (int)rect[1]); y < std::min(img.h, (int)rect[3]); ++y)
      for (int x = std::max(0, (int)rect[0]); x < std::min(img.w, (int)rect[2]); ++x) {
        const unsigned char* p = img.at(x, y);
        if (p[0] > 200 && p[1] > 140 && p[1] < 210 && p[2] < 60) ++yellow;
        colours.insert(p[0] << 16 | p[1] << 8 | p[2]);
      }
    std::printf("panel [%g %g %g %g]: %d histogram pixels, %zu colours\n", rect[0], rect[1], rect[2], rect[3], yellow,
                colours.size());
    EXPECT(rect[2] - rect[0] > 200 && rect[3] - rect[1] > 150, "panel too small");
    EXPECT(yellow > 200, "the panel's histograms are missing (%d pixels of their colour)", yellow);
    EXPECT(colours.size() > 20, "the panel looks empty");
  }
  return viewer_check::finish();
}
