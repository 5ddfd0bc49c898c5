// The common subset of C++ and GLSL the shared layout headers (rfa_head_table.h, push_layouts.h)
// are written in: `uint` and `float` fields, `const uint` constants, structs. In C++ they live in
// namespace rfa::shader, where `uint` is uint32_t; in GLSL they are plain globals.
#ifndef RFA_SHARED_PRELUDE_H
#define RFA_SHARED_PRELUDE_H

#ifdef __cplusplus
#include <cstdint>
#define RFA_SHARED_BEGIN \
  namespace rfa::shader {  \
  using uint = uint32_t;
#define RFA_SHARED_END }
#else
#define RFA_SHARED_BEGIN
#define RFA_SHARED_END
#endif

#endif
