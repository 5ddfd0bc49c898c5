// doctest main for every suite. After the run, any Vulkan validation message seen makes the
// process fail even if it arrived outside a test case (e.g. while destroying the context).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "test_support.hpp"

int main(int argc, char** argv) {
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  int rc = ctx.run();
  rfa::test::shutdown();
  if (rfa::test::validation_messages() != 0) {
    std::fprintf(stderr, "%llu Vulkan validation message(s) were reported\n",
                 (unsigned long long)rfa::test::validation_messages());
    return rc ? rc : 1;
  }
  return rc;
}
