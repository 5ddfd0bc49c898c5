// The library's own way into its public handles (rfa::Context, rfa::Heatmap): the GPU context
// behind a Context and a Heatmap's image state. Internal: the ops, the session, the tests and
// rfa-bench use it; the public headers expose no impl() (they only befriend internal::Access).
#pragma once

#include "gpu/context.hpp"
#include "rfa/context.hpp"
#include "rfa/heatmap.hpp"

namespace rfa {

namespace internal {
struct Access {
  static gpu::Context& gpu(Context& c) { return *c.impl_; }
  static const gpu::Context& gpu(const Context& c) { return *c.impl_; }
  static Heatmap::Impl& heatmap(Heatmap& h) { return *h.impl_; }
};
}  // namespace internal

// The GPU context behind `c`.
inline gpu::Context& gpu_of(Context& c) { return internal::Access::gpu(c); }
inline const gpu::Context& gpu_of(const Context& c) { return internal::Access::gpu(c); }

}  // namespace rfa
