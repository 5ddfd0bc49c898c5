// Generation: GPU-sampled, device-fed, pipelined tokens equal the host sampler's (the twin) on the
// logits read back, for fixed seeds, greedy, temperature, top-k, top-p and batches; the logits of
// every fed position come back when asked; errors are clear.
#include <doctest/doctest.h>

#include <memory>

#include "model/model.hpp"
#include "model_factory.hpp"
#include "rfa/sampler.hpp"
#include "rfa/session.hpp"
#include "test_support.hpp"

using namespace rfa;

namespace {

std::shared_ptr<const Model> lm(uint32_t seed) {
  test::ModelSpec s;
  s.d_e = 24;
  s.heads = 3;
  s.head_dim = 4;
  s.hidden = 40;
  s.vocab = 61;  // off-tile
  return std::make_shared<Model>(test::make_model(Architecture::lm, seed, 2, NormKind::layer_norm, s));
}

std::unique_ptr<Session> prompted(std::shared_ptr<const Model> m, int B, bool last_only) {
  SessionOptions o;
  o.batch = B;
  o.max_context = 64;
  o.last_output_only = last_only;
  auto s = Session::create(test::context(), m, o);
  REQUIRE(s.ok());
  std::vector<int64_t> ids;
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < 5; ++i) ids.push_back((7 * i + 11 * b + 3) % m->vocab);
  REQUIRE((*s)->prefill_tokens(ids, 5).ok());
  return s.take();
}

}  // namespace

TEST_CASE("GPU generation equals the host sampler for fixed seeds") {
  auto m = lm(3);
  struct Setting {
    double temperature;
    int top_k;
    double top_p;
  };
  const Setting settings[] = {{0.0, 0, 1.0}, {1.0, 0, 1.0}, {0.7, 5, 1.0}, {1.3, 0, 0.8}, {0.9, 20, 0.95}, {5.0, 0, 0.3}};
  int compared = 0;
  for (int B : {1, 2})
    for (bool last_only : {true, false})
      for (const Setting& st : settings)
        for (uint64_t seed : {1ull, 42ull}) {
          CAPTURE(B);
          CAPTURE(last_only);
          CAPTURE(st.temperature);
          CAPTURE(st.top_k);
          CAPTURE(st.top_p);
          CAPTURE(seed);
          GenerateOptions o;
          o.tokens = 24;
          o.sampler = {st.temperature, st.top_k, st.top_p, seed};
          o.keep_outputs = true;
          auto gs = prompted(m, B, last_only);
          auto hs = prompted(m, B, last_only);
          auto g = gs->generate(o);
          REQUIRE_MESSAGE(g.ok(), g.status().to_string());
          o.on_gpu = false;
          auto h = hs->generate(o);
          REQUIRE_MESSAGE(h.ok(), h.status().to_string());
          CHECK(g->tokens == h->tokens);
          REQUIRE(g->tokens.size() == (size_t)B * 24);
          CHECK_CLOSE_VEC(g->outputs, std::vector<double>(h->outputs.begin(), h->outputs.end()), 1e-5, 1e-5);
          CHECK(gs->position() == 5 + 23);
          compared += (int)g->tokens.size();
        }
  MESSAGE("tokens compared: " << compared);
}

TEST_CASE("generation streams its tokens, fills the cache and checks its inputs") {
  auto m = lm(5);
  auto s = prompted(m, 2, true);
  std::vector<int> seen;
  GenerateOptions o;
  o.tokens = 10;
  o.sampler.temperature = 0.8;
  o.sampler.seed = 9;
  o.on_token = [&](int index, const std::vector<int64_t>& rows) {
    seen.push_back(index);
    CHECK(rows.size() == 2);
  };
  auto g = s->generate(o);
  REQUIRE(g.ok());
  CHECK(seen == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(g->outputs.empty());
  const SessionStats st = s->stats();
  // Streaming on after generation: the cache holds the generated positions.
  REQUIRE(s->step_tokens({1, 2}).ok());
  CHECK(s->position() == 5 + 9 + 1);
  CHECK(st.submits > 0);
  // Too many tokens for the context; no prompt yet; a signal model.
  o.tokens = 100;
  CHECK(s->generate(o).status().code() == Code::input_error);
  s->reset();
  o.tokens = 2;
  CHECK(s->generate(o).status().code() == Code::invalid_argument);
}
