// The headless viewer checked against the CPU twin. Runs `rfa-viewer --headless ... --screenshot`
// on a small random-weight signal model streamed from a .npy file with irregular timestamps, then
//  - samples the screenshot at the centre of every cell (i, j) of the heatmap and compares its
//    colour with rfa::heatmap_color() of the double-precision twin's Ahat / A (ref::forward with a
//    ModelProbe), or with the mask colour for j > i;
//  - compares the regimes table's text (from --dump-json) with the model's own head summaries;
//  - while the stream advances (one position per frame), the selected-row panel shows the newest
//    position's row, with the diagnostics Session::row_diagnostics gives for it in this process;
//  - requires exit code 0, which rfa-viewer only returns when the validation layer stayed silent.
// `viewer_headless_check --make-model DIR` only writes the model and inputs (the Xvfb test uses it).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "viewer_check_support.hpp"

#include "model/loader.hpp"
#include "model/npy.hpp"
#include "model/safetensors.hpp"
#include "reference/model_ref.hpp"
#include "rfa/context.hpp"
#include "rfa/heatmap.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using viewer_check::Image;

namespace {

constexpr int kN = 40, kH = 4, kD = 4, kDe = 16, kBlocks = 2, kDin = 2;

void make_model(const fs::path& dir) {
  fs::create_directories(dir / "model");
  json args = {{"n_heads", kH}, {"d_e", kDe}, {"d_k_total", kH * kD}, {"d_v_total", kH * kD},
               {"num_blocks", kBlocks}, {"d_in", kDin}, {"hidden_dim", 32}, {"t_equal", false}, {"seq_len", 64}};
  std::ofstream(dir / "model" / "config.json")
      << json{{"format", "rfa-reference"}, {"architecture", "signal"}, {"args", args}}.dump(2);
  std::mt19937 rng(11);
  auto uni = [&](size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
  };
  std::map<std::string, rfa::TensorToWrite> t;
  auto put = [&](const std::string& name, std::vector<int64_t> shape, std::vector<float> v) {
    t[name] = rfa::TensorToWrite{std::move(shape), std::move(v), rfa::DType::f32};
  };
  auto lin = [&](const std::string& p, int in, int out) {
    put(p + ".weight", {out, in}, uni((size_t)in * out, -0.6f, 0.6f));
    put(p + ".bias", {out}, uni((size_t)out, -0.2f, 0.2f));
  };
  auto ln = [&](const std::string& p) {
    put(p + ".weight", {kDe}, uni(kDe, 0.8f, 1.2f));
    put(p + ".bias", {kDe}, uni(kDe, -0.1f, 0.1f));
  };
  lin("input_proj", kDin, kDe);
  lin("output_head", kDe, kDin);
  lin("backbone.input_proj", kDe, kDe);
  lin("backbone.output_proj", kDe, kDe);
  ln("backbone.final_norm");
  for (int l = 0; l < kBlocks; ++l) {
    const std::string p = "backbone.blocks." + std::to_string(l) + ".";
    for (const char* w : {"W_q", "W_k", "W_v"}) lin(p + "attn." + w, kDe, 2 * kH * kD);
    lin(p + "attn.W_o", 2 * kH * kD, kDe);
    std::vector<float> mu = uni(kH, 1e-3f, 0.1f);
    mu[0] = 0.0f;  // a Brownian head
    put(p + "attn.mu_v", {kH}, mu);
    put(p + "attn.sigma_v", {kH}, uni(kH, -3, 1));
    put(p + "attn.sigma_tilde_v", {kH}, uni(kH, -3, 1));
    put(p + "attn.eta_v", {kH}, {-3.0f, 2.0f, -2.0f, 1.5f});  // both regimes
    put(p + "attn.gamma_v", {kH}, uni(kH, -3, 0));
    put(p + "attn.tau_param", {kH}, uni(kH, 0, 2));
    put(p + "attn.nu_param", {kH}, uni(kH, 0, 3));
    put(p + "attn.omega_v", {kH, kD / 2}, uni(kH * kD / 2, 0, 1));
    put(p + "attn.t_shift_param", {1, kH}, uni(kH, -1, 1));
    put(p + "attn.P_prior_log", {1, 1, kH, 1, 1}, uni(kH, -1, 1));
    put(p + "attn.P_scale_log", {1, 1, kH, 1, 1}, uni(kH, -3, 0));
    ln(p + "norm1");
    ln(p + "norm2");
    lin(p + "ffn.0", kDe, 32);
    lin(p + "ffn.2", 32, kDe);
  }
  rfa::Status s = rfa::write_safetensors((dir / "model" / "model.safetensors").string(), t);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    std::exit(2);
  }
  // Inputs: a noisy spiral-ish path, [N, d_in + 1] with irregular timestamps in the last column.
  std::vector<float> in((size_t)kN * (kDin + 1));
  double tt = 0;
  for (int k = 0; k < kN; ++k) {
    in[(size_t)k * 3] = (float)(5 * std::cos(0.3 * k) + uni(1, -1, 1)[0]);
    in[(size_t)k * 3 + 1] = (float)(5 * std::sin(0.3 * k) + uni(1, -1, 1)[0]);
    in[(size_t)k * 3 + 2] = (float)tt;
    tt += std::round(uni(1, 0.5f, 1.5f)[0] * 8) / 8;  // exactly representable steps
  }
  s = rfa::write_npy_f32((dir / "inputs.npy").string(), {kN, kDin + 1}, in);
  if (!s.ok()) std::exit(2);
}

struct Case {
  int layer, head;
  bool decayed, log_scale;
  double vmax, decades;
};

void check_case(const std::string& viewer, const fs::path& dir, const Case& c, int index) {
  const fs::path png = dir / ("shot" + std::to_string(index) + ".png"), js = dir / ("shot" + std::to_string(index) + ".json");
  char cmd[4096];
  std::snprintf(cmd, sizeof cmd,
                "'%s' --headless --model '%s' --npy '%s' --steps %d --rate 0 --frames 3 --layer %d --head %d %s %s "
                "--vmax %g --decades %g --view-extent %d --screenshot '%s' --dump-json '%s'",
                viewer.c_str(), (dir / "model").c_str(), (dir / "inputs.npy").c_str(), kN, c.layer, c.head,
                c.decayed ? "--decayed" : "", c.log_scale ? "--log" : "--linear", c.vmax, c.decades, kN, png.c_str(),
                js.c_str());
  std::printf("$ %s\n", cmd);
  int rc = std::system(cmd);
  EXPECT(rc == 0, "rfa-viewer exited with %d (non-zero: an error or validation messages)", rc);
  if (rc != 0) return;
  Image img;
  if (!viewer_check::read_image(png.string(), &img)) return;
  const int h = img.h;
  json j = json::parse(std::ifstream(js));
  const auto view = j["view"].get<std::vector<int>>();
  const auto rect = j["map_screen"].get<std::vector<double>>();
  EXPECT(j["position"].get<int>() == kN, "position %d, expected %d", j["position"].get<int>(), kN);
  EXPECT(view == std::vector<int>({0, kN, 0, kN}), "view is not the whole [0, %d) square", kN);
  EXPECT(rect[2] - rect[0] > 100 && rect[0] >= 0 && rect[3] <= h, "heatmap placement [%g %g %g %g]", rect[0], rect[1],
         rect[2], rect[3]);

  // The twin: the same model, inputs and timestamps in double precision.
  auto model = rfa::load_model_dir((dir / "model").string());
  auto npy = rfa::read_npy((dir / "inputs.npy").string());
  std::vector<double> x((size_t)kN * kDin), t((size_t)kN);
  for (int k = 0; k < kN; ++k) {
    for (int d = 0; d < kDin; ++d) x[(size_t)k * kDin + d] = npy->values[(size_t)k * 3 + d];
    t[(size_t)k] = npy->values[(size_t)k * 3 + 2];
  }
  rfa::ref::ModelProbe probe;
  probe.requests = {{c.layer, c.head}};
  auto out = rfa::ref::forward(**model, 1, kN, x.data(), nullptr, t.data(), &probe);
  EXPECT(out.ok(), "ref::forward failed");
  if (!out.ok()) return;
  const auto& W = c.decayed ? probe.captures[0].A : probe.captures[0].Ahat;
  rfa::HeatmapRequest req;
  req.decayed = c.decayed;
  req.log_scale = c.log_scale;
  req.vmax = (float)c.vmax;
  req.decades = (float)c.decades;
  // A control: the twin's weights of another head must not match the picture (the test can fail).
  rfa::ref::ModelProbe other;
  other.requests = {{c.layer, (c.head + 1) % kH}};
  (void)rfa::ref::forward(**model, 1, kN, x.data(), nullptr, t.data(), &other);
  const auto& W2 = c.decayed ? other.captures[0].A : other.captures[0].Ahat;
  int worst = 0, bad = 0, wi = 0, wj = 0, control_bad = 0;
  const double cw = (rect[2] - rect[0]) / kN, chh = (rect[3] - rect[1]) / kN;
  for (int i = 0; i < kN; ++i)
    for (int jj = 0; jj < kN; ++jj) {
      const int sx = (int)(rect[0] + (jj + 0.5) * cw), sy = (int)(rect[1] + (i + 0.5) * chh);
      const uint32_t want = jj > i ? rfa::kHeatmapMasked : rfa::heatmap_color((float)W[(size_t)i * kN + jj], req);
      int diff = 0;
      for (int k = 0; k < 3; ++k)
        diff = std::max(diff, std::abs((int)img.at(sx, sy)[k] - (int)((want >> (8 * k)) & 0xff)));
      if (diff > worst) worst = diff, wi = i, wj = jj;
      const uint32_t w2 = jj > i ? rfa::kHeatmapMasked : rfa::heatmap_color((float)W2[(size_t)i * kN + jj], req);
      int d2 = 0;
      for (int k = 0; k < 3; ++k)
        d2 = std::max(d2, std::abs((int)img.at(sx, sy)[k] - (int)((w2 >> (8 * k)) & 0xff)));
      if (d2 > 3) ++control_bad;
      if (diff > 3) ++bad;
    }
  std::printf("case %d (layer %d head %d %s %s): %d cells, worst colour difference %d at (%d, %d), %d cells > 3 (another head's weights: %d cells > 3)\n", index,
              c.layer, c.head, c.decayed ? "A" : "Ahat", c.log_scale ? "log" : "linear", kN * kN, worst, wi, wj, bad,
              control_bad);
  EXPECT(control_bad > kN * kN / 10, "the control (another head) matches too: the comparison is vacuous");
  EXPECT(bad == 0, "%d heatmap cells differ from the colour map of the twin's weights by more than 3/255", bad);

  // The regimes table: every numeric cell against the model's own numbers.
  auto heads = rfa::head_summaries(**model);
  const auto cols = j["regime_columns"].get<std::vector<std::string>>();
  const auto rows = j["regimes"].get<std::vector<std::vector<std::string>>>();
  EXPECT(rows.size() == heads.size(), "regimes table has %zu rows for %zu heads", rows.size(), heads.size());
  for (size_t r = 0; r < rows.size() && r < heads.size(); ++r) {
    const auto& hs = heads[r];
    std::map<std::string, double> want = {{"mu", hs.params.mu}, {"stat. var", hs.regime.stationary_variance},
                                          {"eta2", hs.params.eta2}, {"gamma2", hs.params.gamma2},
                                          {"nu/d", hs.params.nu / kD}, {"kappa", hs.params.kappa},
                                          {"tau", hs.params.tau}, {"lag shift", hs.params.lag_shift},
                                          {"alpha", hs.regime.alpha}, {"beta", hs.regime.beta}};
    for (size_t k = 0; k < cols.size(); ++k) {
      const std::string& cell = rows[r][k];
      if (cols[k] == "layer") EXPECT(std::stoi(cell) == hs.layer, "row %zu layer", r);
      else if (cols[k] == "head") EXPECT(std::stoi(cell) == hs.head, "row %zu head", r);
      else if (cols[k] == "regime") EXPECT(cell == rfa::regime_name(hs.regime.regime), "row %zu regime '%s'", r, cell.c_str());
      else if (cols[k] == "mechanism") EXPECT(cell == "RFA", "row %zu mechanism '%s' (the bundled model is RFA)", r, cell.c_str());
      else if (cols[k] == "mechanism terms") EXPECT(cell == hs.terms, "row %zu mechanism terms '%s'", r, cell.c_str());
      else if (cols[k] == "omega band") {
        double lo = 0, hi = 0;
        EXPECT(std::sscanf(cell.c_str(), "%lf..%lf", &lo, &hi) == 2 && std::fabs(lo - hs.omega_min) <= 1e-3 * std::fabs(hs.omega_min) + 1e-9 &&
                   std::fabs(hi - hs.omega_max) <= 1e-3 * std::fabs(hs.omega_max) + 1e-9,
               "row %zu omega band '%s'", r, cell.c_str());
      } else if (want.count(cols[k])) {
        const double v = std::stod(cell), e = want[cols[k]];
        const bool same = std::isinf(e) ? v == e : std::fabs(v - e) <= 1e-3 * std::fabs(e) + 1e-12;
        EXPECT(same, "row %zu %s: table '%s', model %.8g", r, cols[k].c_str(),
               cell.c_str(), e);
      } else {
        EXPECT(false, "unexpected column '%s'", cols[k].c_str());
      }
    }
  }
}

// The stream running, one position per frame: the selected row is the newest one (each frame
// waits for its own submission before the panels are drawn) and its diagnostics are the session's.
void check_streaming(const std::string& viewer, const fs::path& dir) {
  const int layer = 1, head = 2, steps = 30, frames = 4;
  const fs::path js = dir / "streaming.json";
  char cmd[4096];
  std::snprintf(cmd, sizeof cmd,
                "'%s' --headless --model '%s' --npy '%s' --steps %d --rate 1 --frames %d --layer %d --head %d "
                "--dump-json '%s'",
                viewer.c_str(), (dir / "model").c_str(), (dir / "inputs.npy").c_str(), steps, frames, layer, head,
                js.c_str());
  std::printf("$ %s\n", cmd);
  const int rc = std::system(cmd);
  EXPECT(rc == 0, "rfa-viewer exited with %d", rc);
  if (rc != 0) return;
  const json j = json::parse(std::ifstream(js));
  const int pos = j["position"].get<int>();
  EXPECT(pos == steps + frames, "position %d, expected %d", pos, steps + frames);
  const json& r = j["selected_row"];
  std::printf("streaming: position %d, selected row %s\n", pos, r.dump().c_str());
  EXPECT(r.is_object() && r["row"] == pos - 1 && r["newest"] == true, "the selected row is not the newest (position %d): %s",
         pos, r.dump().c_str());
  if (!r.is_object()) return;
  auto model = rfa::load_model_dir((dir / "model").string());
  auto npy = rfa::read_npy((dir / "inputs.npy").string());
  auto ctx = rfa::Context::create(rfa::context_options_from_environment());  // RFA_DEVICE, RFA_VALIDATION
  EXPECT(model && npy && ctx, "cannot load the model, the inputs or a context");
  if (!model || !npy || !ctx) return;
  rfa::SessionOptions so;
  so.max_context = pos;
  auto s = rfa::Session::create(**ctx, *model, so);
  std::vector<float> x;
  std::vector<double> t;
  for (int i = 0; i < pos; ++i) {
    for (int c = 0; c < kDin; ++c) x.push_back((float)npy->values[(size_t)i * (kDin + 1) + c]);
    t.push_back(npy->values[(size_t)i * (kDin + 1) + kDin]);
  }
  EXPECT(s && (*s)->prefill_values(x, pos, t).ok(), "cannot run the session");
  if (!s) return;
  const double th[4] = {1, 4, 16, 64};
  auto d = rfa::Inspector(**s).row_diagnostics(layer, head, 0, pos - 1, pos, th);
  EXPECT(d.ok(), "row_diagnostics failed");
  if (!d.ok()) return;
  auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-5 * std::fabs(b) + 1e-6; };
  const rfa::RowDiagnostics& w = (*d)[0];
  EXPECT(near(r["entropy"].get<double>(), w.entropy) && near(r["log_partition"].get<double>(), w.log_partition) &&
             near(r["max_weight"].get<double>(), w.max_weight) && near(r["expected_lag"].get<double>(), w.expected_lag),
         "selected row %s, the session's row %d: entropy %.8g log Z %.8g max %.8g lag %.8g", r.dump().c_str(), pos - 1,
         w.entropy, w.log_partition, w.max_weight, w.expected_lag);
  EXPECT((*ctx)->validation_message_count() == 0, "validation messages in this process");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--make-model") {
    make_model(argv[2]);
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: viewer_headless_check RFA_VIEWER WORKDIR | --make-model DIR\n");
    return 2;
  }
  const fs::path dir = argv[2];
  std::error_code ec;
  fs::remove_all(dir, ec);
  make_model(dir);
  const Case cases[] = {{1, 1, false, false, 0.5, 3}, {0, 2, true, true, 1.0, 3}, {1, 0, false, true, 1.0, 4}};
  for (int k = 0; k < 3; ++k) check_case(argv[1], dir, cases[k], k);
  check_streaming(argv[1], dir);
  return viewer_check::finish();
}
