// printf-style formatting of one number for the mechanisms' summary tables (rfa-run --summary).
#pragma once

#include <cstdio>
#include <string>

namespace rfa::mech {

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace rfa::mech
