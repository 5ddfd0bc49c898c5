// The viewer on every model of the zoo, as docs/viewer.md's screenshots are made: runs
// scripts/viewer-screenshots.sh --json (headless, validation on) at the default window size and at
// a smaller one, then checks each run's --dump-json and picture:
//  - every panel of the model's kind is there (the trajectory for signal models, not for the text
//    model), drawn inside the window, none overlapping another, each with its content fitting
//    (nothing clipped, nothing scrolled out of sight: the viewer's PanelAudit), every table too;
//  - no panel reports an error (the status line, the tomography's message: no "has no AFA form");
//  - the tomography has a result with a finite effective rank, for AFA and RT-RFA heads too;
//  - the selected row is the newest position and its diagnostics are finite (AFA and RT too);
//  - the regimes table has a row per head, naming the model's mechanism;
//  - the text model's map carries row and column labels at the default zoom, and its hover readout;
//  - the picture has the window's size and weighs under 300 KB;
//  - an AFA head's hover readout in a sliding window: its weights inside the band, "outside the
//    window" beyond it.
// usage: viewer_zoo_check SOURCE_DIR RFA_VIEWER WORKDIR [--models DIR] [--only MODEL]
//   --models DIR: another zoo (an installed share/rfa/models); --only MODEL: that model at the
//   default size, without the hover case (tests/install_test.sh: an installed or zipped viewer,
//   RFA_VIEWER then a command that may run it under Wine).
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

namespace fs = std::filesystem;
using json = nlohmann::json;
using viewer_check::Image;

namespace {


struct Zoo {
  const char* name;
  const char* mechanism;
  bool signal;
};
const Zoo kZoo[] = {{"spiral-filter", "RFA", true},
                    {"spiral-afa", "AFA", true},
                    {"spiral-afa-full", "AFA-full", true},
                    {"spiral-rt", "RT-RFA", true},
                    {"tiny-char-lm", "RFA", false}};

bool finite(const json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

void check_model(const Zoo& z, const fs::path& dir, int W, int H) {
  std::printf("-- %s at %d x %d\n", z.name, W, H);
  const fs::path js = dir / (std::string("viewer-") + z.name + ".json"), png = dir / (std::string("viewer-") + z.name + ".png");
  std::ifstream f(js);
  EXPECT(f.good(), "%s: no %s", z.name, js.c_str());
  if (!f.good()) return;
  const json j = json::parse(f);
  bool complete = true;
  for (const char* key : {"position", "panels", "tables", "status", "diagnostics", "selected_row", "regimes",
                          "regime_columns", "axis_labels", "hover_readout", "device", "kernel_refusals"})
    if (!j.contains(key)) {
      EXPECT(false, "%s: --dump-json has no '%s'", z.name, key);
      complete = false;
    }
  if (!complete) return;

  // The panels: present, inside the window, apart, their content fitting.
  std::set<std::string> want = {"Model and stream", "Attention map", "Heads of the layer",
                                "Kernels of the layer (current lags)", "Regimes (docs/math.md, section 5)",
                                "Selected query row", "Timings (GPU ms)", "Attention tomography (Laplace-Radon)"};
  if (z.signal) want.insert("Signal: trajectory and error");
  // An AFA model's filter panel (eigenvalues, per-channel kernels, iterations) takes the kernels' place.
  const bool afa = std::string(z.mechanism).rfind("AFA", 0) == 0;
  if (afa) {
    want.erase("Kernels of the layer (current lags)");
    want.insert("AFA filter");
  }
  std::vector<json> panels;
  std::set<std::string> seen;
  for (const json& p : j["panels"]) {
    const std::string name = p["name"];
    if (name.rfind("##Tooltip", 0) == 0) continue;  // the hover readout floats over the map
    panels.push_back(p);
    seen.insert(name);
    const auto r = p["rect"].get<std::vector<double>>();
    std::printf("   %-40s [%4.0f %4.0f %4.0f %4.0f] fits %s\n", name.c_str(), r[0], r[1], r[2], r[3],
                p["fits"].get<bool>() ? "yes" : "NO");
    EXPECT(want.count(name), "%s: unexpected panel '%s'", z.name, name.c_str());
    EXPECT(r[0] >= 0 && r[1] >= 0 && r[2] <= W && r[3] <= H && r[2] - r[0] > 100 && r[3] - r[1] > 60,
           "%s: panel '%s' at [%g %g %g %g] is not inside the %d x %d window", z.name, name.c_str(), r[0], r[1], r[2],
           r[3], W, H);
    EXPECT(p["fits"].get<bool>() && p["shown"].get<bool>(), "%s: panel '%s' does not fit its content (overflow %s, scroll %s)",
           z.name, name.c_str(), p["overflow"].dump().c_str(), p["scroll_max"].dump().c_str());
  }
  for (const std::string& w : want) EXPECT(seen.count(w), "%s: panel '%s' missing", z.name, w.c_str());
  for (size_t a = 0; a < panels.size(); ++a)
    for (size_t b = a + 1; b < panels.size(); ++b) {
      const auto p = panels[a]["rect"].get<std::vector<double>>(), q = panels[b]["rect"].get<std::vector<double>>();
      const double ox = std::min(p[2], q[2]) - std::max(p[0], q[0]), oy = std::min(p[3], q[3]) - std::max(p[1], q[1]);
      EXPECT(ox <= 0 || oy <= 0, "%s: panels '%s' and '%s' overlap", z.name, panels[a]["name"].get<std::string>().c_str(),
             panels[b]["name"].get<std::string>().c_str());
    }
  std::set<std::string> tables;
  for (const json& t : j["tables"]) {
    tables.insert(t["name"].get<std::string>());
    EXPECT(t["fits"].get<bool>(), "%s: table '%s' cuts its columns or rows (overflow %s)", z.name,
           t["name"].get<std::string>().c_str(), t["overflow"].dump().c_str());
  }
  EXPECT(tables.count("regimes") && (afa || tables.count("kernels")), "%s: the regimes or kernels table is missing", z.name);

  // An AFA model's filter panel: the selected head's eigenvalues (one per channel) beside the
  // spiral's true pair, its channel maps, a finite basis consistency and, with tied iterations, the
  // mean change of every pass.
  if (afa) {
    const json& a = j["afa"];
    EXPECT(a.is_object(), "%s: no AFA panel readout", z.name);
    if (a.is_object()) {
      EXPECT(a["eigenvalues"].size() == (size_t)a["channels"].get<int>() && a["true_eigenvalues"].size() == 2 &&
                 a["kernels"] == true && finite(a["basis_consistency"]),
             "%s: AFA panel %s", z.name, a.dump().c_str());
      EXPECT(a["mean_change"].size() == (size_t)(a["iterations"].get<int>() > 1 ? a["iterations"].get<int>() : 0),
             "%s: AFA panel's iterations %s", z.name, a.dump().c_str());
      for (const json& c : a["mean_change"]) EXPECT(finite(c), "%s: AFA panel's change %s", z.name, a.dump().c_str());
    }
  }

  // No panel reports an error.
  EXPECT(j["status"] == "", "%s: status line '%s'", z.name, j["status"].get<std::string>().c_str());
  const json& d = j["diagnostics"];
  EXPECT(d["shown"] == true && d["error"] == "" && finite(d["erank"]) && d["erank"].get<double>() >= 1.0,
         "%s: tomography %s", z.name, d.dump().c_str());
  EXPECT(finite(d["entropy_mean"]) && finite(d["dim_eff_u"]) && finite(d["tau_mean"]), "%s: tomography numbers %s", z.name,
         d.dump().c_str());

  // The selected row: the newest position, with finite diagnostics.
  const json& r = j["selected_row"];
  EXPECT(r.is_object(), "%s: no selected row", z.name);
  if (r.is_object()) {
    EXPECT(r["newest"] == true && r["row"].get<int>() == j["position"].get<int>() - 1,
           "%s: selected row %d at position %d", z.name, r["row"].get<int>(), j["position"].get<int>());
    EXPECT(finite(r["entropy"]) && r["entropy"].get<double>() > 0 && finite(r["log_partition"]) &&
               finite(r["max_weight"]) && r["max_weight"].get<double>() <= 1 + 1e-5 && finite(r["expected_lag"]),
           "%s: selected row %s", z.name, r.dump().c_str());
    for (const json& m : r["mass_beyond"]) EXPECT(finite(m), "%s: mass beyond %s", z.name, r["mass_beyond"].dump().c_str());
  }

  // The regimes table: a row per head, naming the mechanism.
  const auto cols = j["regime_columns"].get<std::vector<std::string>>();
  const auto rows = j["regimes"].get<std::vector<std::vector<std::string>>>();
  EXPECT(rows.size() == 8, "%s: %zu rows in the regimes table (2 layers x 4 heads)", z.name, rows.size());
  for (size_t c = 0; c < cols.size(); ++c)
    if (cols[c] == "mechanism")
      for (const auto& row : rows) EXPECT(row[c] == z.mechanism, "%s: mechanism '%s'", z.name, row[c].c_str());

  if (!z.signal) {
    const json& a = j["axis_labels"];
    EXPECT(a["rows"].size() == (size_t)j["position"].get<int>() && a["cols"].size() == a["rows"].size(),
           "%s: %zu row and %zu column labels for %d positions at the default zoom", z.name, a["rows"].size(),
           a["cols"].size(), j["position"].get<int>());
    const auto lines = j["hover_readout"].get<std::vector<std::string>>();
    EXPECT(lines.size() >= 4 && lines[3].find("Ahat") != std::string::npos, "%s: hover readout %s", z.name,
           j["hover_readout"].dump().c_str());
  }

  // The picture.
  int w = 0, h = 0, ch = 0;
  EXPECT(stbi_info(png.c_str(), &w, &h, &ch) == 1 && w == W && h == H, "%s: %s is %d x %d", z.name, png.c_str(), w, h);
  std::error_code ec;
  const auto bytes = fs::file_size(png, ec);
  EXPECT(!ec && bytes < 300 * 1024, "%s: %s weighs %llu bytes", z.name, png.c_str(), (unsigned long long)bytes);
}

// The hover readout of an AFA head in a sliding window (20 keys, a ring of 39 slots at position 60):
// a key inside the band shows the head's own Ahat and A (from its probe: Session::pair is RFA's),
// one still in the ring but outside the band says so instead of showing a zero weight.
void check_window_hover(const fs::path& src, const std::string& viewer, const fs::path& work) {
  for (const auto& [cell, want] : {std::pair{std::string("50,45"), std::string("Ahat = ")},
                                   std::pair{std::string("50,25"), std::string("outside the window of 20")}}) {
    const fs::path js = work / ("hover-" + cell.substr(3) + ".json");
    const std::string cmd = "'" + viewer + "' --headless --model '" + (src / "models/spiral-afa").string() +
                            "' --window 20 --steps 60 --rate 0 --frames 2 --hover " + cell + " --dump-json '" +
                            js.string() + "'";
    std::printf("$ %s\n", cmd.c_str());
    const int rc = std::system(cmd.c_str());
    EXPECT(rc == 0, "rfa-viewer exited with %d", rc);
    if (rc != 0) continue;
    const json j = json::parse(std::ifstream(js));
    const std::string lines = j["hover_readout"].dump();
    std::printf("hover %s: %s\n", cell.c_str(), lines.c_str());
    EXPECT(lines.find(want) != std::string::npos, "hover %s: readout %s lacks '%s'", cell.c_str(), lines.c_str(),
           want.c_str());
    EXPECT(j["status"] == "", "hover %s: status '%s'", cell.c_str(), j["status"].get<std::string>().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string zoo, only;
  bool usage = argc < 4;
  for (int i = 4; i < argc && !usage; i += 2) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage = true;
    else if (a == "--models") zoo = argv[i + 1];
    else if (a == "--only") only = argv[i + 1];
    else usage = true;
  }
  std::vector<Zoo> models;
  for (const Zoo& z : kZoo)
    if (only.empty() || only == z.name) models.push_back(z);
  if (usage || models.empty()) {
    std::fprintf(stderr, "usage: viewer_zoo_check SOURCE_DIR RFA_VIEWER WORKDIR [--models DIR] [--only MODEL]\n");
    return 2;
  }
  const fs::path src = argv[1], work = argv[3];
  std::vector<std::pair<int, int>> sizes = {{1600, 1000}};
  if (only.empty()) sizes.push_back({1440, 900});
  for (const auto& [W, H] : sizes) {
    const fs::path dir = work / (std::to_string(W) + "x" + std::to_string(H));
    std::error_code ec;
    fs::remove_all(dir, ec);
    std::string cmd = "RFA_VIEWER='" + std::string(argv[2]) + "' bash '" + (src / "scripts/viewer-screenshots.sh").string() +
                      "' --json --out '" + dir.string() + "' --size " + std::to_string(W) + "x" + std::to_string(H);
    if (!zoo.empty()) cmd += " --models '" + zoo + "'";
    if (!only.empty()) cmd += " " + only;
    std::printf("$ %s\n", cmd.c_str());
    const int rc = std::system(cmd.c_str());
    EXPECT(rc == 0, "viewer-screenshots.sh exited with %d (an error, or validation messages)", rc);
    if (rc != 0) continue;
    for (const Zoo& z : models) check_model(z, dir, W, H);
  }
  if (only.empty()) check_window_hover(src, argv[2], work);
  return viewer_check::finish();
}
