// The common subset of C++ and GLSL the shared headers (rfa_head_table.h, push_layouts.h,
// viridis_ramp.h) are written in: `uint` and `float` fields, `const uint` constants, structs, and
// constant arrays initialised between RFA_ARRAY_BEGIN(type, n) and RFA_ARRAY_END (braces in C++,
// an array constructor in GLSL). In C++ they live in namespace rfa::shader, where `uint` is
// uint32_t; in GLSL they are plain globals.
#ifndef RFA_SHARED_PRELUDE_H
#define RFA_SHARED_PRELUDE_H

#ifdef __cplusplus
#include <cstdint>
#define RFA_SHARED_BEGIN \
  namespace rfa::shader {  \
  using uint = uint32_t;
#define RFA_SHARED_END }
#define RFA_ARRAY_BEGIN(type, n) {
#define RFA_ARRAY_END }
#else
#define RFA_SHARED_BEGIN
#define RFA_SHARED_END
#define RFA_ARRAY_BEGIN(type, n) type[n](
#define RFA_ARRAY_END )
#endif

#endif
