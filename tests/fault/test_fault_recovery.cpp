// The recovery an app writes after a lost device (docs/cpp-api.md, "When the device fails"),
// shown working: a stream loses its device in the middle (an injected VK_ERROR_DEVICE_LOST), makes
// a new context and session, prefills them from its own copy of what it fed, and continues with
// the outputs of a stream that never broke. Also: out of memory is retried on the same objects.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "fault/scenarios.hpp"
#include "fault/vk_faults.hpp"
#include "rfa/session.hpp"
#include "test_support.hpp"

using namespace rfa;
using namespace rfa::test;

namespace {

// What docs/cpp-api.md shows: the app keeps what it fed; on device_lost it drops everything made
// on the lost context, makes a new context and session, feeds them its copy, and goes on.
struct RecoveringStream {
  ContextOptions context_options;
  std::shared_ptr<const Model> model;
  SessionOptions session_options;
  std::unique_ptr<Context> ctx;
  std::unique_ptr<Session> session;
  std::vector<float> fed;       // every position's values so far (the app's own copy)
  std::vector<double> times;
  int recoveries = 0;

  Status open() {
    session.reset();  // everything made on a lost context goes before the context
    ctx.reset();
    auto c = Context::create(context_options);
    if (!c) return c.status();
    ctx = c.take();
    auto s = Session::create(*ctx, model, session_options);
    if (!s) return s.status();
    session = s.take();
    if (times.empty()) return Status::Ok();
    return session->prefill_values(fed, (int)times.size(), times);  // the history, in one call
  }

  Status step(const std::vector<float>& x, double t) {
    Status s = session->step_values(x, {t});
    if (s.code() == Code::device_lost) {
      ++recoveries;
      RFA_TRY(open());
      s = session->step_values(x, {t});
    }
    if (s.ok()) {
      fed.insert(fed.end(), x.begin(), x.end());
      times.push_back(t);
    }
    return s;
  }
};

std::vector<float> stream(RecoveringStream& r, int steps, int lose_at, VkResult how, const char* where) {
  std::vector<float> out;
  for (int p = 0; p < steps; ++p) {
    if (p == lose_at) faults::arm_call(faults::function_index(where), 1, how);
    Status s = r.step(sweep::spiral_values(p, 1), sweep::spiral_times(p, 1)[0]);
    REQUIRE_MESSAGE(s.ok(), "position " << p << ": " << s.to_string());
    out.insert(out.end(), r.session->outputs().begin(), r.session->outputs().end());
  }
  faults::disarm();
  return out;
}

RecoveringStream make_stream() {
  RecoveringStream r;
  r.context_options = sweep::options(sweep::World{});
  auto m = load_model_dir(source_dir() + "/models/spiral-filter");
  REQUIRE(m.ok());
  r.model = m.take();
  REQUIRE(r.open().ok());
  return r;
}

}  // namespace

TEST_CASE("a stream that loses its device recovers on a new context with the outputs of an unbroken stream") {
  REQUIRE(faults::install().ok());
  // The spiral model's own window (50): the stream runs past the ring before the loss.
  const int steps = 140, lose_at = 117;
  RecoveringStream unbroken = make_stream();
  const std::vector<float> want = stream(unbroken, steps, -1, VK_SUCCESS, "vkQueueSubmit");
  CHECK(unbroken.recoveries == 0);
  struct Loss {
    VkResult how;
    const char* where;
  };
  for (Loss loss : {Loss{VK_ERROR_DEVICE_LOST, "vkQueueSubmit"}, Loss{VK_ERROR_DEVICE_LOST, "vkWaitForFences"},
                    Loss{VK_TIMEOUT, "vkWaitForFences"}}) {
    CAPTURE(loss.where);
    CAPTURE(loss.how);
    RecoveringStream broken = make_stream();
    const std::vector<float> got = stream(broken, steps, lose_at, loss.how, loss.where);
    CHECK(broken.recoveries == 1);
    // A new context (a loss is sticky: the old one would still say lost; comparing addresses would
    // not do, the new context may be allocated where the old one was).
    CHECK(!broken.ctx->lost());
    CHECK(broken.session->position() == steps);
    // Before the loss: the same work, the same bits. After it: the history prefilled in one call
    // and streamed on, equal to the stream that never broke to float32 rounding (prefill and
    // streaming agree to it: docs/cpp-api.md).
    REQUIRE(got.size() == want.size());
    const size_t cut = (size_t)lose_at * 2;
    CHECK(std::vector<float>(got.begin(), got.begin() + cut) == std::vector<float>(want.begin(), want.begin() + cut));
    CHECK_CLOSE_VEC(std::vector<float>(got.begin() + cut, got.end()),
                    std::vector<double>(want.begin() + cut, want.end()), 1e-5, 1e-5);
  }
  CHECK(sweep::validation_messages() == 0);
}

TEST_CASE("out of memory leaves the session as it was, and the same call succeeds once memory is back") {
  REQUIRE(faults::install().ok());
  RecoveringStream a = make_stream(), b = make_stream();
  for (int p = 0; p < 20; ++p) {
    REQUIRE(a.step(sweep::spiral_values(p, 1), sweep::spiral_times(p, 1)[0]).ok());
    REQUIRE(b.step(sweep::spiral_values(p, 1), sweep::spiral_times(p, 1)[0]).ok());
  }
  // A prefill of 7 more positions needs a new step plan: its recording's command pool fails.
  faults::arm_call(faults::function_index("vkCreateCommandPool"), 1, VK_ERROR_OUT_OF_DEVICE_MEMORY);
  Status s = b.session->prefill_values(sweep::spiral_values(20, 7), 7, sweep::spiral_times(20, 7));
  CHECK(faults::fired());
  CHECK(s.code() == Code::out_of_memory);
  CHECK(s.message().find("vkCreateCommandPool") != std::string::npos);
  CHECK(b.session->position() == 20);  // nothing was fed
  CHECK(!b.ctx->lost());
  // The memory is back: the same call on the same session gives what an untroubled one gives.
  REQUIRE(b.session->prefill_values(sweep::spiral_values(20, 7), 7, sweep::spiral_times(20, 7)).ok());
  REQUIRE(a.session->prefill_values(sweep::spiral_values(20, 7), 7, sweep::spiral_times(20, 7)).ok());
  CHECK(b.session->outputs() == a.session->outputs());
  CHECK(sweep::validation_messages() == 0);
}
