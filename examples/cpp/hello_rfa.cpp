// hello_rfa (C++): load a model folder, stream it one position at a time on the best Vulkan
// device, and look at what one head does. Works for every architecture:
//   hello_rfa_cpp <prefix>/share/rfa/models/spiral-filter     (a signal model)
//   hello_rfa_cpp <prefix>/share/rfa/models/tiny-char-lm      (a language model: greedy text)
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "rfa/environment.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"
#include "rfa/tokenizer.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  // The best device; the app reads RFA_DEVICE / RFA_VALIDATION itself (librfa reads no environment).
  auto ctx = rfa::Context::create(rfa::context_options_from_environment());
  if (!ctx) return std::fprintf(stderr, "%s\n", ctx.status().to_string().c_str()), 1;
  auto model = rfa::load_model_dir(argv[1]);
  if (!model) return std::fprintf(stderr, "%s\n", model.status().to_string().c_str()), 1;
  const rfa::ModelInfo info = rfa::model_info(**model);
  std::printf("%s: %s model, %d layers x %d heads on %s\n", info.name.c_str(), info.architecture.c_str(),
              info.layers, info.heads, (*ctx)->device_info().name.c_str());

  auto session = rfa::Session::create(**ctx, *model, {.batch = 1, .max_context = 64});
  if (!session) return std::fprintf(stderr, "%s\n", session.status().to_string().c_str()), 1;
  rfa::Session& s = **session;
  const int steps = 24;
  if (info.architecture == "lm") {
    auto tok = rfa::load_tokenizer(**model);
    if (!tok) return std::fprintf(stderr, "%s\n", tok.status().to_string().c_str()), 1;
    std::vector<int> text = (*tok)->encode("The ");
    const int prompt = (int)text.size();
    int64_t next = text[0];
    for (int i = 0; i < steps; ++i) {
      if (auto st = s.step_tokens({next}); !st.ok()) return std::fprintf(stderr, "%s\n", st.to_string().c_str()), 1;
      if (i + 1 < prompt) {  // still feeding the prompt
        next = text[(size_t)i + 1];
        continue;
      }
      const std::vector<float>& logits = s.outputs();  // [1][1][vocab]: greedy choice
      int best = 0;
      for (int v = 1; v < info.output_dim; ++v) best = logits[(size_t)v] > logits[(size_t)best] ? v : best;
      text.push_back(best);
      next = best;
    }
    std::printf("text: %s\n", (*tok)->decode(text).c_str());
  } else {
    for (int i = 0; i < steps; ++i) {  // a noise-free sine on every input channel, at t = 0.5 i
      std::vector<float> x((size_t)info.input_dim, (float)std::sin(0.3 * i));
      if (auto st = s.step_values(x, {0.5 * i}); !st.ok()) return std::fprintf(stderr, "%s\n", st.to_string().c_str()), 1;
    }
    std::printf("last output[0] = %.5f\n", s.outputs()[0]);
  }
  // The newest row of layer 0, head 0: Ahat sums to 1 over the keys.
  const int n = s.position();
  auto row = rfa::Inspector(s).attention(0, 0, 0, n - 1, n, 0, n, /*decayed=*/false);
  if (!row) return std::fprintf(stderr, "%s\n", row.status().to_string().c_str()), 1;
  double sum = 0;
  for (float w : *row) sum += w;
  std::printf("layer 0 head 0: row %d sums to %.6f; regime %s\n", n - 1, sum,
              rfa::regime_name(rfa::head_summaries(**model)[0].regime.regime));
  return std::fabs(sum - 1.0) < 1e-3 ? 0 : 1;
}
