// The viewer on a text model (the zoo's byte-level tiny-char-lm, a prompt streamed in full):
//  - zoomed in (a 16-position frame), the map carries a label per token along both axes: the
//    prompt's bytes, a space shown as '_' (checked in --dump-json and as text pixels left of the map);
//  - with the mouse held over cell (20, 17) (--hover) and only two frames drawn, the readout names
//    both tokens, its tooltip is on screen (its window shown, text pixels inside it), and the text
//    panel shows the query and key tokens on their highlight colours (counted in the screenshot);
//  - at the default zoom (a 64-position frame, cells shorter than a line) every row still has its
//    label (in staggered columns) and every column too;
//  - the control run (zoomed out, no hover) has no labels, no readout and no highlight pixels;
//  - exit code 0 from rfa-viewer: the validation layer stayed silent.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "viewer_check_support.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using viewer_check::Image;

namespace {


const std::string kPrompt = "The cat sat on the mat.";

// A screenshot and the --dump-json of the same run.
struct Shot : Image {
  json j;
};

bool shoot(const std::string& viewer, const fs::path& model, const fs::path& dir, const std::string& name,
           const std::string& extra, Shot* out, int frames = 3) {
  const fs::path png = dir / (name + ".png"), js = dir / (name + ".json");
  const std::string cmd = "'" + viewer + "' --headless --model '" + model.string() + "' --prompt '" + kPrompt +
                          "' --steps " + std::to_string(kPrompt.size()) + " --rate 0 --no-generate --frames " +
                          std::to_string(frames) + " " + extra + " --screenshot '" + png.string() + "' --dump-json '" +
                          js.string() + "'";
  std::printf("$ %s\n", cmd.c_str());
  const int rc = std::system(cmd.c_str());
  EXPECT(rc == 0, "rfa-viewer exited with %d (an error, or validation messages)", rc);
  if (rc != 0) return false;
  if (!viewer_check::read_image(png.string(), out)) return false;
  out->j = json::parse(std::ifstream(js));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: viewer_text_check RFA_VIEWER MODEL_DIR WORKDIR\n");
    return 2;
  }
  const fs::path dir = argv[3];
  fs::create_directories(dir);
  // The labels the byte tokenizer's tokens must get: the prompt's characters, space as '_'.
  std::vector<std::string> want;
  for (char c : kPrompt) want.push_back(c == ' ' ? "_" : std::string(1, c));
  const int n = (int)kPrompt.size(), qi = 20, kj = 17;

  Shot in, out, plain;
  // Two frames: --hover holds the mouse from the first, and Dear ImGui shows a tooltip from its second.
  if (shoot(argv[1], argv[2], dir, "zoomed", "--view-extent 16 --hover " + std::to_string(qi) + "," + std::to_string(kj),
            &in, 2)) {
    const json& a = in.j["axis_labels"];
    EXPECT(in.j["position"].get<int>() == n, "position %d, expected %d", in.j["position"].get<int>(), n);
    EXPECT(a["r0"] == 0 && a["c0"] == 0, "the view does not start at position 0");
    EXPECT(a["rows"].get<std::vector<std::string>>() == want, "row labels %s", a["rows"].dump().c_str());
    EXPECT(a["cols"].get<std::vector<std::string>>() == want, "column labels %s", a["cols"].dump().c_str());
    EXPECT(in.j["hover"] == json::array({qi, kj}), "hover %s, expected [%d, %d]", in.j["hover"].dump().c_str(), qi, kj);
    const auto lines = in.j["hover_readout"].get<std::vector<std::string>>();
    EXPECT(lines.size() >= 3 && lines[0].find("\"" + want[qi] + "\" (id " + std::to_string((int)kPrompt[qi]) + ")") != std::string::npos &&
               lines[1].find("\"" + want[kj] + "\" (id " + std::to_string((int)kPrompt[kj]) + ")") != std::string::npos,
           "hover readout %s", in.j["hover_readout"].dump().c_str());
    const int query = in.count(200, 90, 40), key = in.count(40, 150, 200);
    std::printf("zoomed, hovering (%d, %d): query highlight %d px, key highlight %d px\n", qi, kj, query, key);
    EXPECT(query > 20 && key > 20, "the hovered tokens are not highlighted in the text (%d, %d px)", query, key);
    const auto r = in.j["map_screen"].get<std::vector<double>>();
    const int label_px = in.bright((int)r[0] - 60, (int)r[1], (int)r[0] - 2, (int)r[3]);
    std::printf("zoomed: %d text pixels left of the map\n", label_px);
    EXPECT(label_px > 50, "no row labels drawn left of the map (%d bright pixels)", label_px);
    // The readout's tooltip is on screen in the second frame, with its text.
    bool tooltip = false;
    for (const json& p : in.j["panels"]) {
      if (p["name"].get<std::string>().rfind("##Tooltip", 0) != 0) continue;
      tooltip = p["shown"].get<bool>();
      const auto t = p["rect"].get<std::vector<double>>();
      const int text_px = in.bright((int)t[0], (int)t[1], (int)t[2], (int)t[3]);
      std::printf("zoomed: tooltip [%g %g %g %g], shown %d, %d text pixels\n", t[0], t[1], t[2], t[3], (int)tooltip, text_px);
      EXPECT(tooltip && text_px > 200, "the hover readout's tooltip is not on screen (shown %d, %d text pixels)", (int)tooltip,
             text_px);
    }
    EXPECT(tooltip, "no tooltip window for the hover readout");
  }
  // The default zoom: the 23 positions in a 64-position frame, cells shorter than a line.
  if (shoot(argv[1], argv[2], dir, "default", "", &plain)) {
    const json& a = plain.j["axis_labels"];
    EXPECT(a["rows"].get<std::vector<std::string>>() == want, "default zoom: row labels %s", a["rows"].dump().c_str());
    EXPECT(a["cols"].get<std::vector<std::string>>() == want, "default zoom: column labels %s", a["cols"].dump().c_str());
    const auto v = plain.j["view"].get<std::vector<int>>();
    EXPECT(v[1] - v[0] == 64, "default zoom: a frame of %d rows, expected 64", v[1] - v[0]);
    const auto r = plain.j["map_screen"].get<std::vector<double>>();
    const int label_px = plain.bright((int)r[0] - 60, (int)r[1], (int)r[0] - 2, (int)r[3]);
    std::printf("default zoom: %d text pixels left of the map\n", label_px);
    EXPECT(label_px > 50, "default zoom: no row labels drawn left of the map (%d bright pixels)", label_px);
  }
  if (shoot(argv[1], argv[2], dir, "control", "--view-extent 512", &out)) {
    const json& a = out.j["axis_labels"];
    EXPECT(a["rows"].empty() && a["cols"].empty(), "labels drawn at 512 positions per map: %s", a.dump().c_str());
    EXPECT(out.j["hover"].is_null() && out.j["hover_readout"].empty(), "a hover without the mouse");
    const int query = out.count(200, 90, 40), key = out.count(40, 150, 200);
    EXPECT(query == 0 && key == 0, "highlight colours without a hover (%d, %d px)", query, key);
    const auto r = out.j["map_screen"].get<std::vector<double>>();
    const int label_px = out.bright((int)r[0] - 60, (int)r[1], (int)r[0] - 2, (int)r[3]);
    EXPECT(label_px == 0, "%d text pixels left of a zoomed-out map", label_px);
  }
  return viewer_check::finish();
}
