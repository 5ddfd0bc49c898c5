// check_with_twin (C++): a prefill on the GPU checked against the double-precision CPU twin, which
// lives in a library of its own (link rfa::reference, or pkg-config rfa_reference).
//   check_with_twin <prefix>/share/rfa/models/spiral-filter
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "rfa/environment.hpp"
#include "rfa/reference.hpp"
#include "rfa/session.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]), 2;
  auto model = rfa::load_model_dir(argv[1]);
  if (!model) return std::fprintf(stderr, "%s\n", model.status().to_string().c_str()), 1;
  const rfa::ModelInfo info = rfa::model_info(**model);
  const int n = 16;
  std::vector<int64_t> ids;
  std::vector<double> values;
  for (int i = 0; i < n; ++i) {
    if (info.input_dim == 0) ids.push_back((int64_t)(65 + i) % info.vocab);
    for (int d = 0; d < info.input_dim; ++d) values.push_back(std::sin(0.3 * i + d));
  }
  auto twin = rfa::reference_forward(**model, 1, n, values.empty() ? nullptr : values.data(),
                                     ids.empty() ? nullptr : ids.data(), nullptr);
  if (!twin) return std::fprintf(stderr, "%s\n", twin.status().to_string().c_str()), 1;

  auto ctx = rfa::Context::create(rfa::context_options_from_environment());
  if (!ctx) return std::fprintf(stderr, "%s\n", ctx.status().to_string().c_str()), 1;
  auto session = rfa::Session::create(**ctx, *model, {.batch = 1, .max_context = n});
  if (!session) return std::fprintf(stderr, "%s\n", session.status().to_string().c_str()), 1;
  rfa::Status st = info.input_dim == 0 ? (*session)->prefill_tokens(ids, n)
                                       : (*session)->prefill_values(std::vector<float>(values.begin(), values.end()), n);
  if (!st) return std::fprintf(stderr, "%s\n", st.to_string().c_str()), 1;
  const std::vector<float>& gpu = (*session)->outputs();
  if (gpu.size() != twin->size()) return std::fprintf(stderr, "sizes differ\n"), 1;
  double worst = 0;
  for (size_t i = 0; i < gpu.size(); ++i) worst = std::max(worst, std::fabs((double)gpu[i] - (*twin)[i]));
  std::printf("%s: GPU vs CPU twin over %d positions: max |diff| %.2e\n", info.name.c_str(), n, worst);
  return worst < 1e-3 ? 0 : 1;
}
