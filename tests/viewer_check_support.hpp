// Shared by the viewer's check programs (viewer_headless_check, viewer_text_check,
// viewer_zoo_check, viewer_diagnostics_check; tests/extra.cmake): EXPECT and its failure count,
// screenshots read as RGB images with the pixel counts the checks make, and the closing line.
// Include it once per program: it carries stb_image's implementation.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

namespace viewer_check {

inline int failures = 0;

// An RGB screenshot.
struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> px;  // RGB, rows top to bottom
  const unsigned char* at(int x, int y) const { return &px[((size_t)y * w + x) * 3]; }
  // Pixels of exactly this colour.
  int count(unsigned char r, unsigned char g, unsigned char b) const {
    int n = 0;
    for (size_t k = 0; k + 2 < px.size(); k += 3) n += px[k] == r && px[k + 1] == g && px[k + 2] == b;
    return n;
  }
  // Text-coloured pixels (bright grey) in [x0, x1) x [y0, y1), clipped to the image.
  int bright(int x0, int y0, int x1, int y1) const {
    int n = 0;
    for (int y = std::max(y0, 0); y < std::min(y1, h); ++y)
      for (int x = std::max(x0, 0); x < std::min(x1, w); ++x) {
        const unsigned char* p = at(x, y);
        n += p[0] > 180 && p[1] > 180 && p[2] > 180;
      }
    return n;
  }
};

}  // namespace viewer_check

// Counts a failure, with a printf-style message on stderr, unless cond holds.
#define EXPECT(cond, ...)                         \
  do {                                            \
    if (!(cond)) {                                \
      std::fprintf(stderr, "FAIL: " __VA_ARGS__); \
      std::fprintf(stderr, "\n");                 \
      ++viewer_check::failures;                   \
    }                                             \
  } while (0)

namespace viewer_check {

// Reads a PNG as RGB into *out; a failure (EXPECTed) returns false.
inline bool read_image(const std::string& png, Image* out) {
  int ch = 0;
  unsigned char* p = stbi_load(png.c_str(), &out->w, &out->h, &ch, 3);
  EXPECT(p != nullptr, "cannot read %s", png.c_str());
  if (!p) return false;
  out->px.assign(p, p + (size_t)out->w * out->h * 3);
  stbi_image_free(p);
  return true;
}

// The program's last line and exit code: "ok" and 0, or the number of failures and 1.
inline int finish() {
  std::printf(failures ? "FAILED (%d)\n" : "ok\n", failures);
  return failures ? 1 : 0;
}

}  // namespace viewer_check
